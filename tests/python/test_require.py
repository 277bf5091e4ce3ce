"""Optional test dependencies: skipped when missing, unless CI requires them all."""

import pytest

from conftest import require


def test_a_missing_package_skips_by_default(monkeypatch):
    monkeypatch.delenv("GPUNVME_REQUIRE_ALL", raising=False)
    with pytest.raises(pytest.skip.Exception):
        require("gpunvme_no_such_package")


def test_a_missing_package_fails_when_every_package_is_required(monkeypatch):
    monkeypatch.setenv("GPUNVME_REQUIRE_ALL", "1")
    with pytest.raises(pytest.fail.Exception, match="gpunvme_no_such_package"):
        require("gpunvme_no_such_package")


def test_a_present_package_is_returned_either_way(monkeypatch):
    for value in ("0", "1"):
        monkeypatch.setenv("GPUNVME_REQUIRE_ALL", value)
        assert require("json").dumps([]) == "[]"
