from yuexuan.cli import run

run()
