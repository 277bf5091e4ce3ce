"""Self-tests of the tree checks in this folder: each check runs over synthetic
checkouts, one clean and one per kind of violation, and must report exactly
the violations planted there."""

import os
import tempfile


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
