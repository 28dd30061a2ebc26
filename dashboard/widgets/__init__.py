"""Streamlit building blocks the pages are made of: the controls and the scenario link, the sidebar, the live
fragment, the panels that show one run, the presenter view, replay, the demo picker, the safe text and error
helpers (`ui`), and `registry`, the runs registry every session of this process shares. The only modules besides
app_pages/ that import streamlit. May import figures/, state/, views/ and the engine.
"""
