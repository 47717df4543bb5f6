from gitkb.commands import tombstone_command
from gitkb.warmstart.retract import retract

command = tombstone_command(
    "retract", retract, "Take RECORD_ID back: status deprecated, score 0; the record stays."
)
