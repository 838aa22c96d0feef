FROM python:3.11-slim
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
# The packages, bottom layer first (README: Layout).
COPY agentsite agentsite
COPY streams streams
COPY runs runs
COPY workspace workspace
COPY hitl hitl
COPY agui agui
COPY execution execution
COPY lgapi lgapi
COPY api api
COPY pages pages
COPY agents agents
# The chat model providers' packages (AGENT_MODEL=openai:…, anthropic:…, ollama:…);
# build with --build-arg EXTRAS= for none.
ARG EXTRAS=openai,anthropic,ollama
RUN pip install ".[${EXTRAS}]"
COPY . .
RUN useradd --create-home app && chown -R app /app
USER app
EXPOSE 8000
CMD ["python", "-m", "uvicorn", "agentsite.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--timeout-graceful-shutdown", "5"]
