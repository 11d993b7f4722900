#!/usr/bin/env python3
"""Tests of module_cycles.py on small crates written to a temporary directory: a layered crate
passes; a cycle added on purpose (through `use`, an inline path, a re-export, a nested
module) fails, naming the modules; test-only modules do not count."""

import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "module_cycles.py")


def crate(files: dict[str, str]) -> str:
    root = tempfile.mkdtemp(prefix="cycles-")
    for path, text in files.items():
        full = os.path.join(root, "src", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def check(root: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


LAYERED = {
    "lib.rs": "mod low;\nmod mid;\nmod top;\npub use top::Top;\n",
    "low.rs": "pub struct Low;\n",
    "mid.rs": "use crate::low::Low;\npub struct Mid(pub Low);\n",
    "top.rs": "use crate::mid::Mid;\npub struct Top(pub Mid);\n#[cfg(test)]\nmod tests {\n    use crate::top::Top;\n}\n",
}


class ModuleCycles(unittest.TestCase):
    def test_a_layered_crate_passes(self):
        r = check(crate(LAYERED))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_use_that_points_up_is_a_cycle(self):
        files = dict(LAYERED, **{"low.rs": "use crate::top::Top;\npub struct Low;\n"})
        r = check(crate(files))
        self.assertEqual(r.returncode, 1)
        self.assertIn("modules low, mid, top of crate form a cycle", r.stdout)
        self.assertIn("low -> top", r.stdout)

    def test_an_inline_path_counts(self):
        files = dict(LAYERED, **{"low.rs": "pub struct Low;\nfn f() -> crate::mid::Mid { todo() }\n"})
        r = check(crate(files))
        self.assertEqual(r.returncode, 1)
        self.assertIn("low -> mid", r.stdout)

    def test_a_re_export_is_followed_to_its_module(self):
        # `crate::Top` is `top::Top` re-exported by the root: low depends on top.
        files = dict(LAYERED, **{"low.rs": "use crate::Top;\npub struct Low;\n"})
        r = check(crate(files))
        self.assertEqual(r.returncode, 1)
        self.assertIn("low -> top", r.stdout)

    def test_cycles_among_nested_modules_count(self):
        files = dict(LAYERED)
        files["mid.rs"] = "mod a;\nmod b;\nuse crate::low::Low;\npub struct Mid(pub Low);\n"
        files["mid/a.rs"] = "use super::b::B;\npub struct A;\n"
        files["mid/b.rs"] = "use crate::mid::a::A;\npub struct B;\n"
        r = check(crate(files))
        self.assertEqual(r.returncode, 1)
        self.assertIn("modules a, b of crate::mid form a cycle", r.stdout)

    def test_test_modules_do_not_count(self):
        files = dict(LAYERED)
        files["low.rs"] = "pub struct Low;\n#[cfg(test)]\nmod tests {\n    use crate::top::Top;\n}\n"
        r = check(crate(files))
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_comments_and_strings_are_not_paths(self):
        files = dict(LAYERED, **{"low.rs": '// uses crate::top::Top\npub const S: &str = "crate::top::Top";\npub struct Low;\n'})
        r = check(crate(files))
        self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == "__main__":
    unittest.main()
