"""``NAME:key=value,...`` arguments read one way (``costmodels.key_values``): a response-length
distribution, a synthetic rollout trace and a co-scheduling trace generator refuse the same
mistakes with the same words."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodels.cosched.arrivals import parse_generator
from costmodels.errors import SpecError
from costmodels.generation.lengths import parse_distribution
from costmodels.key_values import parse_key_values
from planner.cli.generation import simulation_requests


def _synthetic(text: str):
    return simulation_requests(text, 0, lambda p: Path(p).read_text())


# (reader, its generator with one argument of each kind, the count argument, the field)
READERS = [
    (parse_distribution, "lognormal:median=900", "n", "lengths"),
    (_synthetic, "synthetic:max=2048", "prompts", "lengths"),
    (parse_generator, "philly:hours=10", "jobs", "trace"),
]


@pytest.mark.parametrize(("read", "base", "count", "field"), READERS)
@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ("{count}=1.5", ["{field}.{count}", "not an integer", "1.5"]),
        ("{count}=nan", ["{field}.{count}", "finite", "nan"]),
        ("{count}=abc", ["{field}.{count}", "not a number", "abc"]),
        ("{count}=3,{count}=4", ["{field}.{count}", "given twice", "{count}=4"]),
        ("colour=red", ["{field}.colour", "takes", "colour=red"]),
        ("{count}", ["{field}.{count}", "takes"]),
    ],
)
def test_every_generator_refuses_the_same_mistakes_alike(read, base, count, field, extra, words):
    with pytest.raises(SpecError) as info:
        read(f"{base},{extra.format(count=count)}")
    message = str(info.value)
    for word in words:
        assert word.format(count=count, field=field) in message


@pytest.mark.parametrize(("read", "base", "count", "field"), READERS)
def test_an_integer_written_as_a_float_is_read_whole(read, base, count, field):
    """``1e1`` is ten: a count may be written as a number, as long as it is whole."""
    assert read(f"{base},{count}=1e1") == read(f"{base},{count}=10")


@given(st.dictionaries(st.sampled_from("abc"), st.integers(-(10**30), 10**30), max_size=3))
def test_integers_are_read_exactly_as_typed(values):
    """A long integer is not rounded through a float."""
    text = ",".join(f"{k}={v}" for k, v in values.items())
    assert parse_key_values(text, dict.fromkeys("abc", int), field="f", name="g") == values
