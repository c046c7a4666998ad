"""The README's set-up times against the last measurement of them (``benchmarks.readme_times``):
a README figure more than 20% from the recorded quiet run fails here, so the times a newcomer
reads are re-measured when they drift."""

from __future__ import annotations

from benchmarks.readme_times import check, readme_claims


def test_readme_times_are_within_20_percent_of_the_last_measurement():
    assert check() == []


def test_claims_are_read_from_the_first_code_block():
    text = (
        "intro: make test takes about 99 minutes\n```sh\n"
        "make plan    # the example: about 2.5 minutes\n"
        "make test    # the suite: about 9 minutes on 2 cores\n```\n"
        "```sh\nmake test    # about 1 minute\n```\n"
    )
    assert readme_claims(text) == {"plan": 150.0, "test": 540.0}
