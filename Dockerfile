# The dashboard, for docker-compose.yml (which pairs it with DynamoDB Local).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine ./engine
COPY dashboard ./dashboard
COPY .streamlit ./.streamlit
RUN pip install --no-cache-dir .
EXPOSE 8501
# Inside the container Streamlit must listen on all interfaces; compose publishes it on 127.0.0.1 only.
CMD ["python", "-m", "dashboard", "--expose", "--server.port", "8501", "--server.headless", "true"]
