"""Machine-independent notebook outputs, shared by scripts/run-notebooks.sh (which writes
them into the committed notebooks) and tests/python/test_notebooks.py (which compares a
fresh execution with them)."""

import re

# Output kinds compared with the committed notebook: printed text and the plain-text and
# Markdown forms of displayed values (tables, conclusions). Images are not compared: their
# bytes depend on the matplotlib, font and zlib versions, not only on the results.
COMPARED_DATA = ("text/plain", "text/markdown")

# Text that differs between machines and executions although the results are the same:
# the kernel's temporary file for a cell (named in warnings), object addresses and wall times.
VOLATILE = [
    (re.compile(r"/tmp/ipykernel_\d+/\d+\.py"), "<cell>"),
    (re.compile(r"\bat 0x[0-9a-fA-F]+>"), "at 0x...>"),
    (re.compile(r"(wall[_ ]?(time|clock|_s)[^\n:=]*[:=]\s*)[0-9.eE+-]+"), r"\1<wall time>"),
]


def normalise(text, source_dir):
    """text with the checkout's path made relative and the volatile parts replaced."""
    text = text.replace(source_dir.rstrip("/") + "/", "")
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def normalise_outputs(cell, source_dir):
    """Rewrites a code cell's stream and compared text outputs in place with normalise()."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            out["text"] = normalise(out.get("text", ""), source_dir)
        for kind in COMPARED_DATA:
            if kind in out.get("data", {}):
                out["data"][kind] = normalise(out["data"][kind], source_dir)


def text_outputs(cell):
    """The compared outputs of one code cell, one string each, tagged with their kind.
    Consecutive writes to one stream count as one output: the kernel sends a cell's printed
    text in chunks whose boundaries depend on timing (a print during a long call may or may
    not share a chunk with the next), not on what was printed."""
    texts = []
    last_stream = None
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            tag = "[%s] " % out.get("name")
            if last_stream == tag:
                texts[-1] += out.get("text", "")
            else:
                texts.append(tag + out.get("text", ""))
            last_stream = tag
            continue
        last_stream = None
        if out.get("output_type") == "error":
            texts.append("[error] %s: %s" % (out.get("ename"), out.get("evalue")))
        else:
            data = out.get("data", {})
            texts.extend("[%s] %s" % (kind, data[kind]) for kind in COMPARED_DATA if kind in data)
    return texts
