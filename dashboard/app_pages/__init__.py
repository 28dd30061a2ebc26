"""One file per page; each reads like a description of its UI (the logic lives in dashboard.*)."""
