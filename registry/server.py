"""The gRPC server factory: the registry service plus health checking and reflection."""

from __future__ import annotations

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from registry.auth import Authenticator
from registry.config import MAX_MESSAGE_BYTES, ServerConfig
from registry.engine import Registry
from registry.proto import registry_pb2, registry_pb2_grpc
from registry.servicer import CapabilityRegistryServicer

SERVICE_NAME = registry_pb2.DESCRIPTOR.services_by_name["CapabilityRegistry"].full_name


def create_server(
    config: ServerConfig, registry: Registry, authenticator: Authenticator
) -> tuple[grpc.aio.Server, int, health.HealthServicer]:
    """Builds a server bound to `config.listen`; returns it, the bound port and its health
    servicer (NOT_SERVING until the caller marks it ready)."""
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ]
    )
    registry_pb2_grpc.add_CapabilityRegistryServicer_to_server(
        CapabilityRegistryServicer(registry, authenticator), server
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for name in (SERVICE_NAME, ""):
        health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    if config.tls_cert and config.tls_key:
        credentials = grpc.ssl_server_credentials(
            [(config.tls_key.read_bytes(), config.tls_cert.read_bytes())]
        )
        port = server.add_secure_port(config.listen, credentials)
    else:
        port = server.add_insecure_port(config.listen)
    return server, port, health_servicer


def mark_serving(health_servicer: health.HealthServicer) -> None:
    for name in (SERVICE_NAME, ""):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
