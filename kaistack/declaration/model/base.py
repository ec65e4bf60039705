"""What every part of the model shares: the frozen base class, names, quantities, KAI's priority classes."""

from __future__ import annotations

import functools
from types import UnionType
from typing import Annotated, Any, Self, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic.alias_generators import to_camel

from kaistack.declaration import kai_api, limits
from placement.k8s_names import is_label_value, is_qualified_name
from placement.quantity import Quantity

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
# Queue, workload and tenant names end up in object names, label values and Pulumi URNs.
Name = Annotated[str, Field(pattern=DNS_LABEL, min_length=1, max_length=63)]
Text = Annotated[str, Field(max_length=limits.MAX_STRING)]
# An identifier kaistack passes on as it is (an AWS region, VPC or subnet id): empty would name nothing, and an
# empty vpcId read as "an existing VPC" handed EKS an empty id instead of creating a VPC.
SomeText = Annotated[str, Field(min_length=1, max_length=limits.MAX_STRING)]


def _qualified_name(value: str) -> str:
    if not is_qualified_name(value):
        raise ValueError(
            f"{value[:80]!r} is not a Kubernetes label or annotation key: an optional DNS subdomain prefix and '/', "
            "then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        )
    return value


def _annotation_key(value: str) -> str:
    # The API server checks an annotation key lowercased (k8s.io/apimachinery/pkg/api/validation
    # ValidateAnnotations: IsQualifiedName(strings.ToLower(k))); a label key as it is.
    _qualified_name(value.lower())
    return value


def _label_value(value: str) -> str:
    if not is_label_value(value):
        raise ValueError(
            f"{value[:80]!r} is not a Kubernetes label value: at most 63 letters, digits, '-', '_' or '.', starting "
            "and ending with a letter or digit (or empty)"
        )
    return value


def _env_name(value: str) -> str:
    # Kubernetes 1.34 takes any printable ASCII but '=' (RelaxedEnvironmentVariableValidation, GA in 1.34).
    if not value or "=" in value or not all(" " <= c <= "~" for c in value):
        raise ValueError(f"{value[:80]!r} is not an environment variable name: printable ASCII without '='")
    return value


# Checked here, since the API server would refuse them after the cluster and its charts are already up.
QualifiedName = Annotated[str, Field(max_length=317), AfterValidator(_qualified_name)]
LabelValue = Annotated[str, Field(max_length=63), AfterValidator(_label_value)]
EnvName = Annotated[str, Field(max_length=limits.MAX_STRING), AfterValidator(_env_name)]
LabelMap = Annotated[dict[QualifiedName, LabelValue], Field(max_length=limits.MAX_LIST_ITEMS)]
AnnotationKey = Annotated[str, Field(max_length=317), AfterValidator(_annotation_key)]
AnnotationMap = Annotated[dict[AnnotationKey, Text], Field(max_length=limits.MAX_LIST_ITEMS)]


def _quantity(value: Any) -> Quantity:
    return Quantity.parse(value)


# A Kubernetes quantity ("500m", "16Gi", 2): the one grammar of placement.quantity, exact value, and
# the text as written (what manifests carry).
KubeQuantity = Annotated[
    Quantity,
    PlainValidator(_quantity),
    PlainSerializer(str, return_type=str),
    WithJsonSchema(
        {
            "type": ["string", "number"],
            "pattern": r"^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$",
        }
    ),
]

NON_PREEMPTIBLE_THRESHOLD = kai_api.NON_PREEMPTIBLE_THRESHOLD
# cluster.kind.tenantPortBase's default; unset tenants[].nodePort count up from the base, in declaration order.
TENANT_NODE_PORT_BASE = 31000


class Model(BaseModel):
    """Base for every config object: frozen, camelCase keys, unknown keys rejected."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, str_strip_whitespace=True
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic's lax mode takes true for 1: a YAML `gpus: yes` would be one GPU. Refused, with the cause."""
        field = cls.model_fields.get(info.field_name) if info.field_name is not None else None
        if field is not None and _boolean_for_a_number(field.annotation, value):
            raise ValueError(
                "expected a number, got a boolean (YAML reads an unquoted yes/no/on/off/true/false as a boolean)"
            )
        return value

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (field names), validated again like the original.

        What was declared stays declared (`model_fields_set`); changed fields count as declared.
        """
        data = {name: getattr(self, name) for name in self.model_fields_set}
        return self.model_validate({**data, **changes}, context=self._validation_context())

    def _validation_context(self) -> dict[str, Any]:
        """The context this model was validated with that a copy must keep (StackConfig's `compared`)."""
        return {}


def _boolean_for_a_number(annotation: Any, value: Any) -> bool:
    """Whether `value` holds a boolean where `annotation` takes a number and no bool: the value itself, or an item
    of a list or a mapping's value (`mig: {nvidia.com/mig-1g.10gb: yes}`)."""
    if not _takes_a_number(annotation):
        return False  # a list of 5,000 names is not walked item by item
    leaves: list[Any] = []
    stack = [annotation]
    while stack:
        current = stack.pop()
        origin = get_origin(current)
        if origin is Annotated:
            stack.append(get_args(current)[0])
        elif origin in (Union, UnionType):
            stack.extend(get_args(current))
        elif origin in (list, tuple) and isinstance(value, list | tuple) and get_args(current):
            if any(_boolean_for_a_number(get_args(current)[0], item) for item in value):
                return True
        elif origin is dict and isinstance(value, dict) and len(get_args(current)) == 2:
            if any(_boolean_for_a_number(get_args(current)[1], item) for item in value.values()):
                return True
        else:
            leaves.append(current)
    return isinstance(value, bool) and bool(set(leaves) & {int, float}) and bool not in leaves


def _takes_a_number(annotation: Any) -> bool:
    """Whether int or float appears anywhere in `annotation` (its unions, lists, mappings' values, Annotated)."""
    try:
        return _takes_a_number_cached(annotation)
    except TypeError:  # an unhashable annotation (Annotated metadata): walked each time
        return _walk_for_number(annotation)


@functools.lru_cache(maxsize=1024)
def _takes_a_number_cached(annotation: Any) -> bool:
    return _walk_for_number(annotation)


def _walk_for_number(annotation: Any) -> bool:
    stack = [annotation]
    while stack:
        current = stack.pop()
        if current in (int, float):
            return True
        stack.extend(a for a in get_args(current) if a is not Ellipsis)
    return False
