"""JSONSchemaTool: a Tool whose input is described by a JSON schema, not a pydantic model."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from pydantic import BaseModel, ConfigDict, model_validator

from ..._exceptions import ToolDefinitionError, ToolInputError
from .._tool import Tool

__all__ = ["JSONSchemaTool", "compile_input_schema", "format_schema_errors"]

_MAX_REPORTED_ERRORS = 8


def compile_input_schema(tool_name: str, schema: Mapping[str, Any]) -> Validator:
    """Check `schema` is a valid JSON schema for a tool input and compile it.

    The dialect comes from ``$schema`` (draft 2020-12 when absent). ``format`` is an
    annotation, not an assertion (the JSON Schema default), so a value the tool
    itself would accept is never refused for its format alone.

    Raises:
        ToolDefinitionError: the schema is not an object schema or is not valid.
    """
    if not isinstance(schema, Mapping):
        raise ToolDefinitionError(f"tool {tool_name!r}: input schema must be an object")
    if schema.get("type", "object") != "object":
        raise ToolDefinitionError(
            f"tool {tool_name!r}: input schema must have type 'object',"
            f" got {schema.get('type')!r}"
        )
    schema_dict = copy.deepcopy(dict(schema))
    cls = validator_for(schema_dict, default=Draft202012Validator)
    try:
        cls.check_schema(schema_dict)
    except SchemaError as exc:
        raise ToolDefinitionError(
            f"tool {tool_name!r}: invalid input schema: {exc.message}"
        ) from exc
    validator: Validator = cls(schema_dict)
    return validator


def _where(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(input)"


def format_schema_errors(tool_name: str, errors: list[ValidationError]) -> str:
    """Say what was wrong with an input, one line per error, in words a model can act on."""
    errors = sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])
    lines = [f"Invalid input for tool {tool_name!r}:"]
    lines += [f"- {_where(e)}: {e.message}" for e in errors[:_MAX_REPORTED_ERRORS]]
    if len(errors) > _MAX_REPORTED_ERRORS:
        lines.append(f"- ... and {len(errors) - _MAX_REPORTED_ERRORS} more")
    return "\n".join(lines)


def _input_model(validator: Validator) -> type[BaseModel]:
    """A pydantic model that enforces the JSON schema, for code that reads `input_model`."""

    class SchemaInput(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _check(cls, data: Any) -> Any:
            error = best_match(validator.iter_errors(data))
            if error is not None:
                raise ValueError(f"{_where(error)}: {error.message}")
            return data

    return SchemaInput


class JSONSchemaTool(Tool):
    """A tool whose input is validated against a JSON schema (MCP servers, manifests).

    `parse` checks the raw input with `jsonschema` and returns a deep copy of it
    unchanged: JSON-schema defaults are not filled in, so the tool receives exactly
    what the model sent. `input_schema` returns the schema as given. `input_model`
    is a permissive pydantic model that runs the same check, for code that
    validates through it.

    Subclasses implement `call`; every other option is the `Tool` one.
    """

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        **options: Any,
    ) -> None:
        self._validator = compile_input_schema(name, input_schema)
        super().__init__(
            name=name,
            description=description,
            input_model=_input_model(self._validator),
            **options,
        )

    def parse(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Validate raw input against the JSON schema and return a copy of it.

        Raises:
            ToolInputError: listing every violation by its path in the input.
        """
        data = dict(raw)
        errors = list(self._validator.iter_errors(data))
        if errors:
            raise ToolInputError(format_schema_errors(self.name, errors))
        return copy.deepcopy(data)

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the input, as given (a copy)."""
        schema: dict[str, Any] = copy.deepcopy(dict(self._validator.schema))  # type: ignore[arg-type]
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        return schema
