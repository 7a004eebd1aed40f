"""The conductor's workflows, one module per task (as Nova's
``conductor/tasks``); ``conductor.manager.ComputeTaskManager`` is their RPC
endpoint and delegates to them.

Every workflow records an instance-action event and undoes, in reverse, the
steps it completed when a later step fails: no BDM without its attachment,
no attachment without its BDM, no volume left reserved.
"""
