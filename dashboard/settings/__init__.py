"""The dashboard's settings from the environment, checked once at launch: every DDBLAB_* value (`env`), the default
endpoint (`endpoint`), and the caps and call budgets every browser session shares (`limits`). Plain Python; may
import the engine's checks of the same values."""
