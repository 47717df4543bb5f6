from gitkb.commands import tombstone_command
from gitkb.warmstart.retract import unretract

command = tombstone_command(
    "unretract", unretract, "Lift RECORD_ID's retraction: restore the status and score it had."
)
