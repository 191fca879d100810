"""Packaging for dp_causal_nb, driven by settings.ini (nbdev 2 layout)."""
from configparser import ConfigParser
import setuptools, shlex

config = ConfigParser(delimiters=['='])
config.read('settings.ini', encoding='utf-8')
cfg = config['DEFAULT']

licenses = {'apache2': 'Apache-2.0'}   # settings.ini's nbdev name -> SPDX expression (PEP 639)
# the trove classifiers PyPI accepts; settings.ini's `status` counts from 0 as nbdev's template does (3 -> '4 - Beta')
statuses = ['1 - Planning', '2 - Pre-Alpha', '3 - Alpha', '4 - Beta', '5 - Production/Stable', '6 - Mature', '7 - Inactive']

def _reqs(key): return shlex.split(cfg.get(key, ''))

extras = {'dev': _reqs('dev_requirements'), 'data': _reqs('data_requirements'), 'ebm': _reqs('ebm_requirements'),
          'class': _reqs('class_requirements'), 'docs': _reqs('docs_requirements'),
          'distributed': _reqs('distributed_requirements')}
extras['all'] = sorted(set(extras['data'] + extras['ebm']))

setuptools.setup(
    name=cfg['lib_name'],
    license_expression=licenses[cfg['license'].lower()],
    classifiers=['Development Status :: ' + statuses[int(cfg['status'])],
                 'Intended Audience :: ' + cfg['audience'].title(),
                 'Natural Language :: ' + cfg['language'].title(),
                 'Programming Language :: Python :: 3'],
    url=cfg['git_url'],
    packages=setuptools.find_packages(include=['dp_causal_nb', 'dp_causal_nb.*']),
    include_package_data=True,
    install_requires=_reqs('requirements'),
    extras_require=extras,
    python_requires='>=' + cfg['min_python'],
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    zip_safe=False,
    entry_points={'console_scripts': cfg.get('console_scripts', '').split(), 'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    version=cfg['version'],
    description=cfg['description'],
    author=cfg['author'],
    author_email=cfg['author_email'],
    keywords=cfg['keywords'],
)
