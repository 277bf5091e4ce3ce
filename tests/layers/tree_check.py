"""What the tree checks of this folder share: the command line (check this
checkout or ROOT, or --self-test) and the self-test, in which a check runs
over synthetic checkouts, one clean and one per kind of violation, and must
report exactly the violations planted there."""

import os
import tempfile


def main(argv, check, self_test, clean_line):
    """`check(root)` gives the violation lines; `clean_line` is printed when
    there are none. Exit code 0 when the tree keeps the rule, else 1."""
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    violations = check(os.path.abspath(root))
    for v in violations:
        print(v)
    if not violations:
        print(clean_line)
    return 1 if violations else 0


class SelfTest:
    """Runs `check(root)` (a list of violation lines) over synthetic trees."""

    def __init__(self, check):
        self.check = check
        self.failures = []
        self.trees = 0

    def expect(self, name, files, wanted):
        """`files` maps paths to contents; each line of `wanted` must be in
        the matching violation, in order, and nothing more reported."""
        self.trees += 1
        with tempfile.TemporaryDirectory() as root:
            for rel, text in files.items():
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            got = self.check(root)
        if len(got) != len(wanted) or not all(w in g for w, g in zip(wanted, got)):
            self.failures.append(f"{name}: expected {wanted}, got {got}")

    def report(self):
        """Prints the outcome; the exit code (0 when every tree checked out)."""
        for f in self.failures:
            print("self-test FAILED:", f)
        if not self.failures:
            print(f"self-test passed: {self.trees} synthetic trees")
        return 1 if self.failures else 0
