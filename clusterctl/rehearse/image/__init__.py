"""Clean node images: what a rehearsal node boots from instead of this machine's root (docs/rehearse.md,
"Images"). :mod:`.catalog` names the images and what each can carry; the builders make them once into the cache."""
