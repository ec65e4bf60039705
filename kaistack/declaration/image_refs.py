"""Whether a container image is a reference the kubelet can pull: the grammar of distribution/reference.

The API server takes any image string without leading or trailing space; the kubelet then parses it with
github.com/distribution/reference (`ParseNormalizedNamed`) and a pod whose image does not parse never starts
(InvalidImageName), after `pulumi up` has created everything around it. So the declaration is held to the same
grammar: distribution/reference@v0.6.0 regexp.go (`referencePat`, with Go's ASCII `\\w`) and reference.go
(`NameTotalLengthMax` 255; a repository name in upper case is refused by name, ErrNameContainsUppercase).
"""

from __future__ import annotations

import re

__all__ = ["image_problem"]

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_REFERENCE = re.compile(
    rf"(?P<name>{_NAME})(?::[\w][\w.-]{{0,127}})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}})?",
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
