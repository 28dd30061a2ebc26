"""What a page's link carries and how it is read back: a run's settings (`run`), a seed scene and its step
(`scene`), a whole workload's text (`workload`). Each refuses what it cannot use, in one line naming the fix."""
