# SPDX-License-Identifier: Apache-2.0
"""The examples in the docstrings run and print what they show (doctest), and every
public function has a numpydoc docstring with its sections."""

import doctest

import pytest

import tsmine
from tsmine import _batch, _score, _stream, _stumpy


@pytest.mark.parametrize("module", [_batch, _stumpy, _stream, _score])
def test_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name", [n for n in tsmine.__all__ if callable(getattr(tsmine, n))])
def test_numpydoc_sections(name):
    obj = getattr(tsmine, name)
    doc = obj.__doc__ or ""
    assert doc.strip(), f"tsmine.{name} has no docstring"
    if isinstance(obj, type):
        return  # classes: a summary, attributes where they have some
    for section in ("Parameters", "Returns"):
        if section == "Parameters" and name == "backends":
            continue  # takes none
        assert f"{section}\n    {'-' * len(section)}" in doc, f"tsmine.{name}: no {section}"
