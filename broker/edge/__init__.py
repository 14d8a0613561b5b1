"""The broker's wire edges that every room shares: the limits each incoming request is checked
against before it reaches a core (request_limits.py), and the way out to the active controller
(controller_channel.py, with the Controller service's protobuf mapping, controller_wire.py).
Imports no other room of broker/, so every room may import it."""
