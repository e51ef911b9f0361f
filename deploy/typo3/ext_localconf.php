<?php

declare(strict_types=1);

defined('TYPO3') or die();

// The DataHandler's hooks: a record of pages or tt_content saved, moved, deleted, copied,
// translated or published from a workspace, and a page's cache (or all of them) cleared.
// DataHandlerHook collects the pages' frontend URLs and sends them to sitetools once, at
// the end of the DataHandler's run.
$GLOBALS['TYPO3_CONF_VARS']['SC_OPTIONS']['t3lib/class.t3lib_tcemain.php']['processDatamapClass']['sitetools_reindex']
    = \Sitetools\Typo3Reindex\Hook\DataHandlerHook::class;
$GLOBALS['TYPO3_CONF_VARS']['SC_OPTIONS']['t3lib/class.t3lib_tcemain.php']['processCmdmapClass']['sitetools_reindex']
    = \Sitetools\Typo3Reindex\Hook\DataHandlerHook::class;
$GLOBALS['TYPO3_CONF_VARS']['SC_OPTIONS']['t3lib/class.t3lib_tcemain.php']['clearCachePostProc']['sitetools_reindex']
    = \Sitetools\Typo3Reindex\Hook\DataHandlerHook::class . '->clearCachePostProc';
