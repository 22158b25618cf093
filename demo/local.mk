# demo
