"""The `kraft` command: the one package above both broker/ (nodes) and chaos/ (chaos runs and
the audit), so that neither of them imports the other. Also `kraft dev`'s local clusters."""
