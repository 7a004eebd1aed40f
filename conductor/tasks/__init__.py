"""The conductor's workflows, one module per task (as Nova's
``conductor/tasks``); ``conductor.manager.ComputeTaskManager`` is their RPC
endpoint: each request builds one task (``base.TaskBase``) with its
arguments and the conductor's collaborators, and executes it.

Every workflow records an instance-action event and undoes, in reverse, the
steps it completed when a later step fails: no BDM without its attachment,
no attachment without its BDM, no volume left reserved.
"""
