"""The "Your workload" page's own widgets: `compare`, the Compare of two workloads (a second preset or a second
text, checked like the first editor, started as a pair with the first on tables of their own)."""
