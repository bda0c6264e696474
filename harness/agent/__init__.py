"""What an agent is and how it is asked: the agents (``agents``: chat and reference agents,
chat and command backends), what an attempt records (``agent_types``), the answer
protocol (``answers``), the command agents' protocol (``command_protocol``), the
reference scaffold (``scaffold``), immutable request JSON (``frozen_json``) and what the
harness asks of an item's family (``families``). Below the adapters, which build agents.
"""
