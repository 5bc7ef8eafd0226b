/** Mocha root hooks: real PostgreSQL and Temporal for the whole run; S3 and MariaDB stopped if a test started them. */
import { closeAdmin } from './database';
import { stopMysql } from './mysql';
import { stopS3 } from './s3';
import { startServices, stopServices } from './services';

// The pinned AWS SDK supports Node 20; its notice that later releases will not is noise in test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(180_000);
    await startServices();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await closeAdmin();
    await Promise.all([stopServices(), stopS3(), stopMysql()]);
  },
};
