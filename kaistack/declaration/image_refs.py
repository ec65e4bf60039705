"""Whether a container image is a reference the kubelet can pull: the grammar of distribution/reference.

The API server takes any image string without leading or trailing space; the kubelet then parses it with
github.com/distribution/reference (`ParseNormalizedNamed`) and a pod whose image does not parse never starts
(InvalidImageName), after `pulumi up` has created everything around it. So the declaration is held to the same
grammar: distribution/reference@v0.6.0 regexp.go (`referencePat`, with Go's ASCII `\\w`) and reference.go
(`NameTotalLengthMax` 255; a repository name in upper case is refused by name, ErrNameContainsUppercase).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ImageRef", "image_problem", "image_ref"]

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_REFERENCE = re.compile(
    rf"(?P<name>{_NAME})(?::(?P<tag>[\w][\w.-]{{0,127}}))?"
    rf"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}}))?",
    re.ASCII,
)
_NAME_MAX = 255


def image_problem(image: str) -> str | None:
    """Why the kubelet would refuse `image` (InvalidImageName), or None when it parses."""
    if not image:
        return "an empty image"
    if any(c.isspace() or not c.isprintable() for c in image):
        return "it holds a space or a control character"
    match = _REFERENCE.fullmatch(image)
    if match is None:
        lowered = _REFERENCE.fullmatch(image.lower())
        if lowered is not None and image.split("@")[0].lower() != image.split("@")[0]:
            return "repository names are lower case"
        return "not [registry[:port]/]name[:tag][@digest] as distribution/reference parses it"
    if len(match.group("name")) > _NAME_MAX:
        return f"its name is longer than {_NAME_MAX} characters"
    return None


class ImageRef(NamedTuple):
    repository: str  # normalized: docker.io/library/busybox for busybox
    tag: str | None
    digest: str | None


def image_ref(image: str) -> ImageRef | None:
    """The parts of a reference that parses, its repository normalized as ParseNormalizedNamed does
    (distribution/reference@v0.6.0 normalize.go splitDockerDomain: no domain is docker.io, whose one-part names are
    under library/); None for one that does not parse."""
    if image_problem(image) is not None:
        return None
    match = _REFERENCE.fullmatch(image)
    assert match is not None  # image_problem parsed it
    name = match.group("name")
    first, slash, rest = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost" and first.lower() == first):
        first, rest = "docker.io", name
    if first == "index.docker.io":
        first = "docker.io"
    if first == "docker.io" and "/" not in rest:
        rest = f"library/{rest}"
    return ImageRef(f"{first}/{rest}", match.group("tag"), match.group("digest"))
