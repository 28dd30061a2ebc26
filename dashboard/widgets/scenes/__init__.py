"""The Seed scenes page's own widgets: `steps`, its call log for a room (the type size of the link, growing with
the screen, and in presenter view one call at a time, stepped with a button or an arrow key)."""
