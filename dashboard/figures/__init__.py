"""Plotly figures as pure functions (calls or aggregates in, figure out), the house style they share (`figure`,
`palette`), and what a chart draws from (time bins, stable samples). Never imports streamlit. May import state/
and the engine's records.
"""
