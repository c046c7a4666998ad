"""The plan: an assignment a: jobs -> machines."""

from __future__ import annotations

from pydantic import BaseModel


class Assignment(BaseModel):
    """``machine_of[j]`` is the machine job j runs on, in 0..m-1."""

    machine_of: list[int]
