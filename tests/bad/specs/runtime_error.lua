-- a spec that fails while it runs
error("no targets for you")
