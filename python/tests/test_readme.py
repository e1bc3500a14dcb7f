# SPDX-License-Identifier: Apache-2.0
"""README.md's Python section runs as printed: its first ```python block, run from the
checkout's root, prints exactly the block that follows it."""

import re
import subprocess
import sys

from conftest import ROOT


def section(text, title):
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_readme_python_section():
    text = section((ROOT / "README.md").read_text(encoding="utf-8"), "Python")
    blocks = re.findall(r"\n```(\w*)\n(.*?)\n```\n", text, flags=re.S)
    langs = [lang for lang, _ in blocks]
    i = langs.index("python")
    code, (_, printed) = blocks[i][1], blocks[i + 1]
    assert len(code.splitlines()) <= 12, "the README's example stays about 10 lines"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == printed.rstrip("\n")
