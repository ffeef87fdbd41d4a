# Sandbox mode on: the state is read-only to every Bash command and slash-command line.
ralph-hooks install --sandbox
