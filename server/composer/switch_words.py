"""The words that switch a feature on or off, as requests say them ("disable ipv6", "root login should be off",
"with ipv6 disabled"): read by the settings and the kernel modules alike."""

ON = r"(?:enable|enabled|enabling|turn\s+on|switch\s+on|allow|allowing|activate|with|want|need)"
# "root login should be off", "ipv6 must stay disabled": a modal verb may stand before the switch
MODAL = r"(?:(?:should|must|shall|will|would|to|can|needs?\s+to|has\s+to|have\s+to)\s+)?"
ON_AFTER = (rf"{MODAL}(?:(?:is|are|be|being|stay|stays|remain|remains)\s+)?"
            r"(?:on|enabled|turned\s+on|switched\s+on|allowed|active|activated)")
# "remove the password login", "get rid of root login": a feature removed is switched off (not its setting undone)
# Verbs of forbidding are verbs of switching off ("disallow root login", "deny password logins").
# "mask ctrl-alt-del": systemd's way of switching a unit off for good is one more verb of it
OFF = (r"(?:disable|disabled|disabling|turn\s+off|switch\s+off|no|without|deactivate|kill|block|forbid|prevent|mask"
       r"|disallow|deny|prohibit|refuse|ban"
       r"|lock\s+down|lock\s+out|lock|remove|drop|get\s+rid\s+of|take\s+out|eliminate|strip"
       # "deploy shouldn't have a password login", "it must not allow root login"
       r"|(?:should|must|shall|will|does|do|can|need)(?:n[’']?t|\s+not)\s+(?:have|get|allow|permit|use|need|accept|want)"
       r"|no\s+longer\s+(?:want|need|use|have|allow))")
OFF_AFTER = (rf"{MODAL}(?:(?:is|are|be|being|stay|stays|remain|remains)\s+)?(?:off|disabled|turned\s+off|switched\s+off|deactivated"
             r"|blocked|forbidden|disallowed|denied|prohibited|refused|banned|masked|locked(?:\s+down)?"
             r"|not\s+(?:be\s+)?(?:needed|wanted|required|allowed|permitted|enabled))")
ARTICLE = r"(?:(?:the|a|an|all|kernel|its)\s+)*"
