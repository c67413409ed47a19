"""The words of how sshd lets people in (system_settings.yaml `key-only ssh`), read by server/composer/parse_settings.py."""

from __future__ import annotations

# How sshd lets people in, by kinds of words rather than phrases: the keys alone ("ssh with key only", "only
# allow key based ssh", "ssh access only via keys") or no passwords ("no password ssh", "ssh without passwords",
# "passwordless ssh"). Both mean sshd refuses passwords (system_settings.yaml `key-only ssh`).
SSH = r"(?:ssh|sshd|openssh|secure\s+shell)"
SSH_ACCESS = r"(?:[\s-]+(?:logins?|log-?ins?|access|connections?|auth(?:entication)?|server))?"
KEY = (r"(?:(?:ssh|public|authorized|rsa|ed25519)[\s-]+)?(?:keys?|pubkeys?|key[\s-]?pairs?|certificates?)"
       r"(?:[\s-]+(?:based|auth(?:entication)?|logins?|access)){0,2}")
ONLY = r"(?:only|exclusively|alone)"
KEY_PREP = r"(?:with|by|via|using|through|from)\s+(?:(?:an?|the|my|our|their)\s+)?"
PASSWORDS = r"(?:password[\s-]+(?:auth(?:entication)?|logins?)|passwords?|passwd)"
# Passwords as a way of logging in, never one user's password
WAYS_IN = r"(?:password[\s-]+(?:auth(?:entication)?|logins?)|passwords)"
# Verbs of refusing, in any person, and acceptance denied ("ssh that refuses passwords", "sshd won't accept passwords")
NO = (r"(?:no|without|never|disable[ds]?|disabling|disallow(?:ed|s|ing)?|forbid(?:s|ding)?|den(?:y|ies|ying)"
      r"|block(?:s|ing)?|refus(?:e|es|ing)|reject(?:s|ing)?"
      r"|(?:(?:does|do|will|would|should|must|shall|can)(?:n[’']?t|\s+not)|won[’']?t|cannot)\s+(?:accept|allow|permit|take))")
KEYS_ONLY = (
    rf"(?:\b(?:allow|permit|enable)\s+)?(?:"
    rf"\b{SSH}{SSH_ACCESS}\s+(?:(?:is|are|should\s+be|must\s+be|allowed|permitted|enabled)\s+)?"
    # ssh (access) only with keys / with keys only; a verb of its own before the way ("ssh only listens with keys")
    rf"(?:{ONLY}\s+(?:[a-z]+s\s+)?{KEY_PREP}{KEY}|(?:[a-z]+s\s+)?{KEY_PREP}{KEY}[\s-]+{ONLY})\b"
    rf"|\b{KEY}[\s-]+{ONLY}\b(?:\s+{SSH}{SSH_ACCESS}\b)?"  # key-only (ssh)
    # only (by) keys, "ssh only accepts keys"
    rf"|\b{ONLY}\s+(?:(?:allow|permit|accept|take)s?\s+)?(?:{KEY_PREP})?{KEY}\b(?:\s+{SSH}{SSH_ACCESS}\b)?"
    rf"|\b(?:password[\s-]?less|password[\s-]free)\s+{SSH}{SSH_ACCESS}\b"  # passwordless ssh
    rf"|\b{SSH}{SSH_ACCESS}\s+(?:(?:with|and|but)\s+)?(?:{NO}|no)\s+(?:an?\s+)?{PASSWORDS}\b"  # ssh without passwords
    rf"|\b{NO}\s+(?:an?\s+)?{PASSWORDS}(?:\s+(?:over|via|for|on|through|in))?\s+{SSH}{SSH_ACCESS}\b"  # no password ssh
    rf")"
)

# "key auth", "public key authentication", "key-based login" without "only": the way in named is the keys (a jump
# host's "ssh only, key auth"), unless passwords are let in beside them ("password and key auth")
KEY_AUTH = r"\b(?:(?:ssh|public)[\s-]+)?(?:keys?|pubkeys?)[\s-]+(?:based[\s-]+)?(?:auth(?:entication)?|logins?)\b"
