"""The plan an LLM answers with in plan mode (the schema of its JSON answer).

Apart from spec_plan.py (which merges it with the deterministic parse): the tools' output schema names it, so
registering the MCP tools at start-up imports only this and pydantic, not the composer, the LLM clients and the
validation rules behind spec_plan (~45 ms on the way to the handshake).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class PlannedSpec(BaseModel):
    """What the model is asked for. Optional facts are ``null`` when the request does not say."""

    model_config = ConfigDict(extra="forbid")

    os: str | None = Field(description="target OS id, e.g. ubuntu, debian, azure-linux")
    dist: str | None = Field(description="distribution id: ubuntu24, ubuntu26, debian13, el10, azl3, emt3, elxr12")
    arch: str | None = Field(description="x86_64 or aarch64; null when the request names none")
    image_type: str | None = Field(description="raw, iso or img")
    add_packages: list[str] = Field(description="package names to install")
    remove_packages: list[str] = Field(description="package names to remove")
    disk_size: str | None = Field(description="whole disk size such as 8GiB")
    hostname: str | None
    kernel_cmdline_append: list[str] = Field(description="kernel parameters such as isolcpus=2-3")
    minimal: bool = Field(description="the request asks for a minimal image")
