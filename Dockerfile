FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY agentsite agentsite
COPY runs runs
COPY hitl hitl
COPY workspace workspace
RUN pip install .
COPY . .
RUN useradd --create-home app && chown -R app /app
USER app
EXPOSE 8000
CMD ["python", "-m", "uvicorn", "agentsite.asgi:application", "--host", "0.0.0.0", "--port", "8000"]
