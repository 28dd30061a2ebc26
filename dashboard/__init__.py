"""The live dashboard: Streamlit pages over the engine. Nothing in engine/ imports this package."""
