"""The published protocol schema (docs/policy-protocol-v1.schema.json,
``master policy-schema``) as validators of an offer and of a reply."""

import json
import os

import jsonschema

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(ROOT, "docs", "policy-protocol-v1.schema.json")) as f:
    SCHEMA = json.load(f)


def validator(name):
    return jsonschema.Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{name}"})


OFFER, REPLY = validator("OfferMessage"), validator("Reply")


def recording(policy_class, seen):
    """``policy_class`` whose every offer and reply (as the package sends
    it) is appended to ``seen`` as (view, reply)."""

    class Recording(policy_class):
        def offer(self, view):
            launches = super().offer(view)
            seen.append((json.loads(json.dumps(view)), {"version": 1, "launches": list(launches)}))
            return launches

    Recording.__name__ = policy_class.__name__
    return Recording


def check_all(seen):
    """Every recorded offer and reply valid; returns how many offers."""
    assert seen, "no offer was recorded"
    for view, reply in seen:
        errors = sorted(OFFER.iter_errors(view), key=str)
        assert not errors, f"an offer the schema refuses: {errors[0].message} at {list(errors[0].path)}"
        errors = sorted(REPLY.iter_errors(reply), key=str)
        assert not errors, f"a reply the schema refuses: {errors[0].message}"
    # The schema is closed: a field it does not name is refused.
    assert not OFFER.is_valid(dict(seen[0][0], surprise=1))
    return len(seen)
