"""The words the dashboard shows, made once: user text made plain (`plain`: a link's or a file's text is never
Markdown or HTML), counts with their nouns (`words`), and a call in the seed's log format (`calls`). Plain Python;
may import dashboard.state and the engine's records."""
