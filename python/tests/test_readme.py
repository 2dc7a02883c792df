"""The README's Python example and python/README.md's run as written
(the PyTorch one against the stand-in torch module)."""

import os
import re

import fake_torch
from conftest import REPO


def python_blocks():
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_examples_run(tmp_path, monkeypatch, capsys):
    blocks = python_blocks()
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md (Python)", "exec"), {})
    assert sorted(os.listdir(tmp_path)) == ["lr.model", "train.toc"]


def test_python_readme_examples_run(tmp_path, monkeypatch, capsys):
    """python/README.md (the package's page): every block, in order, in
    one namespace (the PyTorch one against the stand-in torch module)."""
    import pytest

    pytest.importorskip("sklearn")
    text = (REPO / "python" / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 7
    monkeypatch.chdir(tmp_path)
    fake_torch.install(monkeypatch)
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"python/README.md (block {i + 1})", "exec"), namespace)
    assert sorted(os.listdir(tmp_path)) == ["lr.model", "train.toc"]
