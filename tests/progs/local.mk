# tests/progs
