# appstack operator image: multi-stage, slim, non-root, no build tools in the final image.
FROM python:3.12-slim AS build
WORKDIR /src
RUN python -m venv /opt/appstack
COPY pyproject.toml README.md ./
COPY src ./src
# Only the runtime dependencies: the `testing` and `dev` extras stay out of the image.
RUN /opt/appstack/bin/pip install --no-cache-dir --upgrade pip \
 && /opt/appstack/bin/pip install --no-cache-dir .

FROM python:3.12-slim
COPY --from=build /opt/appstack /opt/appstack
ENV PATH=/opt/appstack/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["appstack"]
CMD ["run", "--leader-elect"]
