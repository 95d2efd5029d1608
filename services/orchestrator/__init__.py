"""The orchestrator: the layer above the services that runs them in order — ``koholint loop``
(burst after burst, ``loop``), its ``--online`` form (``online``) and phase 1's judged levels
(``judged``). Each stage is a service's own command, run as a subprocess (``stages``), and what
it left is read back from the object store; the orchestrator imports no service, and nothing
under ``koholint`` imports the orchestrator (``koholint loop`` and the judged levels are found
through entry points).
"""
