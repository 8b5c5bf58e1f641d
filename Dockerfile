# The manager image used by config/manager and charts/aiokcm. (No container engine runs on the build
# machines of this project, so the image is built by your own CI: `docker build -t aiokcm:0.1.0 .`)
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY manager ./manager
COPY controllers ./controllers
COPY kubesim ./kubesim
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels aiokcm && rm -rf /wheels
USER 65532:65532
EXPOSE 10257
ENTRYPOINT ["aiokcm"]
