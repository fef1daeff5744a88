"""`paused_gc`: a plain pause of the cyclic collector, nothing frozen."""

from __future__ import annotations

import gc

import pytest

from curator._process import paused_gc


def test_paused_gc_pauses_the_collector_and_restores_it_as_it_was() -> None:
    was = gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        gc.enable()
        with paused_gc():
            assert not gc.isenabled()
            with paused_gc():  # nested: still off, and still off after the inner one
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # a caller's own pause is left alone
        assert gc.get_freeze_count() == frozen  # nothing moved to the permanent generation
    finally:
        _restore(was)


def test_paused_gc_restores_the_collector_when_the_work_fails() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(ValueError), paused_gc():
            raise ValueError("bad line")
        assert gc.isenabled()
    finally:
        _restore(was)


def _restore(enabled: bool) -> None:
    if enabled:
        gc.enable()
    else:
        gc.disable()
