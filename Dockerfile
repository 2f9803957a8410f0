# mcpwrap as a static image FROM scratch: the binary, the CA certificates for --url servers, a
# state directory, a non-root user. Nothing else: no shell, no package manager.
#
#   docker build -t mcpwrap .                      # builds the binary in golang:1.26
#   make image                                     # without pulling anything: a binary built
#                                                  # here, then BINARY=prebuilt (podman or docker)
#
# See README.md, "Running it for a team".

# BINARY names the stage whose /out holds mcpwrap, ca-certificates.crt and an empty state/:
# build (the default) compiles it; prebuilt takes them from the build context (see make image).
ARG BINARY=build

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.buildCommit=${COMMIT}" -o /out/mcpwrap ./cmd/mcpwrap \
 && cp /etc/ssl/certs/ca-certificates.crt /out/ \
 && mkdir /out/state

FROM scratch AS prebuilt
COPY mcpwrap ca-certificates.crt /out/
COPY state /out/state

FROM ${BINARY} AS binary

FROM scratch
COPY --from=binary /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=binary /out/mcpwrap /mcpwrap
# 65532: no user on any host; the state directory is its own (mount a volume over it to keep
# the file store, or use a postgres:// store and let it be thrown away).
COPY --from=binary --chown=65532:65532 /out/state /var/lib/mcpwrap
ENV MCPWRAP_STATE_DIR=/var/lib/mcpwrap HOME=/var/lib/mcpwrap
USER 65532:65532
EXPOSE 8931
ENTRYPOINT ["/mcpwrap"]
