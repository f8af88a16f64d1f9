# The suite's configuration lives at the repository root; lit finds it through this file.
lit_config.load_config(config, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "lit.cfg.py"))
