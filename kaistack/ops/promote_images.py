"""Which of the target's workloads takes a promoted image (kaistack.ops.promote): only the same workload, and not
to step a newer release tag or a digest back."""

from __future__ import annotations

from kaistack.declaration.image_refs import image_ref
from kaistack.declaration.model import Workload
from kaistack.declaration.versions import release_order

__all__ = ["not_the_same_workload", "older_tag"]


def not_the_same_workload(
    work: Workload, other: Workload, source: str, allow_downgrade: bool
) -> tuple[str, bool] | None:
    """Why the target's workload of this name takes no image from the source's, and whether that is a newer release
    it keeps: another kind, place or repository (a name matched alone would put one workload's image into another),
    a newer release tag of the same repository (kept as a version pin is, unless --allow-downgrade), or a digest the
    source's reference drops."""
    where = [
        f"{what} {theirs!r} in {source}, {ours!r} here"
        for what, theirs, ours in (
            ("kind", work.kind, other.kind),
            ("tenant", work.tenant, other.tenant),
            ("namespace", work.namespace, other.namespace),
        )
        if theirs != ours
    ]
    new, old = image_ref(work.image), image_ref(other.image)
    if new is not None and old is not None and new.repository != old.repository:
        where.append(f"repository {new.repository} in {source}, {old.repository} here")
    if where:
        return f"not the same workload ({'; '.join(where)}); its image is left alone", False
    if new is None or old is None or new.repository != old.repository:
        return None
    if old.digest is not None and new.digest is None and new.tag == old.tag:
        return f"pins {other.image} by digest, which {source}'s {work.image} drops; kept", False
    if older_tag(work.image, other.image) and not allow_downgrade:
        return f"runs {other.image}, newer than {source}'s {work.image}; kept (--allow-downgrade steps it back)", True
    return None


def older_tag(image: str, than: str) -> bool:
    """Both of one repository, tagged with release versions, `image`'s the older."""
    new, old = image_ref(image), image_ref(than)
    if new is None or old is None or new.repository != old.repository:
        return False
    before, after = release_order(old.tag or ""), release_order(new.tag or "")
    return before is not None and after is not None and after < before
