"""The browser's viewport as the server sees it: `probe`, a tiny inline Streamlit component that reports the
window's width and height (again after a resize), so presenter view can size chart text and heights to the
screen the room sees."""
