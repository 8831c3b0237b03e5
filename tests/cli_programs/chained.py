class ConfigError(Exception):
    pass


def read():
    try:
        {}["missing"]
    except KeyError as e:
        raise ConfigError("no key") from e


read()
