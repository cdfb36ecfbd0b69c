"""Workloads that look like real use (issue #32): multi-turn chats, a shared prefix, decode speed
against context length; each a suite ``kind`` run by :mod:`.run`, its figures in :mod:`.records`."""
