"""Texts stored by content (docs/adr/0015): one `ContentBlob` per distinct
text, keyed by the SHA-256 of its UTF-8 bytes, held either whole or as a
delta against another blob (workspace.text_delta).

The functions take the blob model as an argument so that migrations can
use them with their historical model; everything else goes through
`store_text` / `read_text` with `workspace.models.ContentBlob`.
"""

import hashlib

from django.db import IntegrityError, transaction
from django.db.models import Q

from . import text_delta

# A delta rebuilds from the nearest whole text through at most this many
# deltas, so reading a snapshot costs at most this many small rebuilds.
MAX_CHAIN = 50


class CorruptContent(Exception):
    """A blob rebuilt to a text whose hash is not its key."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def blobs_by_key(model, keys) -> dict:
    """The stored blobs of `keys` (digests), by key, in one query: for a
    caller storing several texts at once (`store_text`'s `known`)."""
    keys = set(keys)
    return {blob.sha256: blob for blob in model.objects.filter(sha256__in=keys)} if keys else {}


def store_text(
    model,
    text: str,
    *,
    base=None,
    base_text: str | None = None,
    ops: text_delta.Delta | None = None,
    known: dict | None = None,
):
    """The blob holding `text`: the existing one if that text is stored
    already, else a new one, a delta against `base` (a blob, normally the
    same field of the previous snapshot, or the previous revision of the
    same document) when that is much smaller than the text itself.
    `base_text`: the base's text when the caller holds it already (the
    document before this write); used only if it hashes to the base's key
    (or is the text the base was just stored or read with), else the base
    is read back. `ops`: operations the caller made `text` with from
    `base_text` (an imported archive's delta, docs/adr/0123), stored as they
    are rather than found again; ignored where the base was read back.
    `known`: what `blobs_by_key` found for this text's key among others (a
    key not in it is not stored, so it is not looked up again); the blob
    stored here is added to it. Call it inside a transaction."""
    key = digest(text)
    if base is not None and base.sha256 == key:
        # Unchanged since the base (most fields of most snapshots): it is the
        # blob that text is stored in, the key being unique.
        return base
    found = known.get(key) if known is not None else model.objects.filter(sha256=key).first()
    if found is not None:
        return found
    fields = {"sha256": key, "length": len(text), "text": text}
    if base is not None and base.depth < MAX_CHAIN:
        held = base_text is not None and (getattr(base, "_rebuilt", None) is base_text or digest(base_text) == base.sha256)
        if base_text is None or not held:
            base_text, ops = read_text(model, base), None
        if ops is None:
            ops = text_delta.delta_between(base_text, text)
        encoded = text_delta.encode(ops)
        if len(encoded) * 2 < len(text):
            fields.update(
                text=None,
                delta=encoded,
                base_id=base.pk,
                depth=base.depth + 1,
                keyframe_id=base.keyframe_id or base.pk,
            )
    try:
        with transaction.atomic():  # a savepoint: a concurrent writer of the same text may win
            blob = model.objects.create(**fields)
    except IntegrityError:
        blob = model.objects.get(sha256=key)
    else:
        blob._rebuilt = text  # the next delta against it (a migration's run of snapshots) needs no rebuild
    if known is not None:
        known[key] = blob
    return blob


def _checked(blob, text: str) -> str:
    if digest(text) != blob.sha256:
        raise CorruptContent(f"Content blob {blob.pk} does not rebuild to the text it was stored for.")
    return text


def _applied(blob, base_text: str) -> str:
    try:
        return text_delta.apply_delta(base_text, text_delta.decode(blob.delta))
    except (ValueError, TypeError, IndexError, KeyError) as exc:  # a damaged delta (JSONDecodeError is a ValueError)
        raise CorruptContent(f"Content blob {blob.pk} holds a delta that cannot be applied ({exc}).") from None


def read_text(model, blob) -> str:
    """The text exactly as stored, checked against its key: a blob that
    does not rebuild to it raises `CorruptContent`, never a wrong text."""
    if getattr(blob, "_rebuilt", None) is not None:
        return blob._rebuilt
    if blob.text is not None:
        blob._rebuilt = _checked(blob, blob.text)
        return blob._rebuilt
    # The keyframe and every delta under it up to this depth, in one query;
    # the chain is walked back from this blob through `base`.
    rows = {
        pk: (text, delta, base_id)
        for pk, text, delta, base_id in model.objects.filter(
            Q(pk=blob.keyframe_id) | Q(keyframe_id=blob.keyframe_id, depth__lt=blob.depth)
        ).values_list("pk", "text", "delta", "base_id")
    }
    chain = [blob]
    current = blob.base_id
    while current != blob.keyframe_id:
        if current not in rows or len(chain) > blob.depth:
            raise CorruptContent(f"Content blob {blob.pk} refers to a base outside its chain.")
        _text, delta, base_id = rows[current]
        chain.append(model(pk=current, delta=delta))
        current = base_id
    text = rows[blob.keyframe_id][0] if blob.keyframe_id in rows else None
    if text is None:
        raise CorruptContent(f"Content blob {blob.pk} has no whole text to rebuild from.")
    for link in reversed(chain):
        text = _applied(link, text)
    blob._rebuilt = _checked(blob, text)
    return text


def read_texts(model, blobs):
    """The texts of `blobs`, in order, each checked as `read_text` checks
    it. A blob stored as a delta against the blob before it (a document's
    revisions in version order) costs that one delta, not its chain."""
    previous_pk, previous_text = None, None
    for blob in blobs:
        if blob.text is None and previous_text is not None and blob.base_id == previous_pk:
            blob._rebuilt = _checked(blob, _applied(blob, previous_text))
        previous_pk, previous_text = blob.pk, read_text(model, blob)
        yield previous_text


def stored_bytes(model) -> int:
    """What the blobs hold: the UTF-8 bytes of their whole texts and deltas,
    plus the 64-character key of each."""
    total = 0
    for text, delta in model.objects.values_list("text", "delta").iterator():
        total += 64 + len((text if text is not None else delta).encode("utf-8"))
    return total
